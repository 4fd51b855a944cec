package api

import (
	"context"
	"net/http"
)

type backlogOut struct {
	Scheduled int64 `json:"scheduled"`
	Overdue   int64 `json:"overdue"`
	Retrying  int64 `json:"retrying"`
	Inflight  int64 `json:"inflight"`
	Dead      int64 `json:"dead"`
}

type topicOut struct {
	Name       string     `json:"name"`
	Format     string     `json:"format"`
	Slots      int        `json:"slots"`
	Key        string     `json:"key,omitempty"`
	Sink       string     `json:"sink,omitempty"`
	Exchange   string     `json:"exchange,omitempty"`
	RoutingKey string     `json:"routing_key,omitempty"`
	KafkaTopic string     `json:"kafka_topic,omitempty"`
	Stream     string     `json:"stream,omitempty"`
	Backlog    backlogOut `json:"backlog"`
}

// topics is GET /v1/topics: the registered topics the token may use, with
// their layout and backlog.
func (s *Server) topics(w http.ResponseWriter, r *http.Request, g grant) {
	ctx, cancel := context.WithTimeout(r.Context(), redisTimeout)
	defer cancel()
	ls, err := s.opts.Queue.Layouts(ctx, s.opts.Prefix)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := struct {
		Topics []topicOut `json:"topics"`
	}{Topics: []topicOut{}}
	for _, l := range ls {
		if !g.allows(l.Name) {
			continue
		}
		stats, err := s.opts.Queue.TopicStats(ctx, l.Topic(s.opts.Prefix))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		t := topicOut{Name: l.Name, Format: string(l.Format), Slots: l.Slots, Key: l.Key, Sink: l.Sink,
			Exchange: l.Exchange, RoutingKey: l.RoutingKey, KafkaTopic: l.KafkaTopic, Stream: l.Stream}
		for _, st := range stats {
			t.Backlog.Scheduled += st.Scheduled
			t.Backlog.Overdue += st.Overdue
			t.Backlog.Retrying += st.Retrying
			t.Backlog.Inflight += st.Inflight
			t.Backlog.Dead += st.Dead
		}
		out.Topics = append(out.Topics, t)
	}
	writeJSON(w, http.StatusOK, out)
}
