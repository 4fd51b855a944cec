package kafka

import kafkago "github.com/segmentio/kafka-go"

// recordBatchOverhead is the size of a v2 record batch header: base offset,
// length, leader epoch, magic, crc, attributes, last offset delta, first and
// max timestamps, producer id and epoch, base sequence, record count.
const recordBatchOverhead = 8 + 4 + 4 + 1 + 4 + 2 + 4 + 8 + 8 + 8 + 2 + 4 + 4

// minRecordBytes is the smallest useful Config.MaxRecordBytes: a batch
// header and a small record.
const minRecordBytes = 2 * recordBatchOverhead

// batchedRecordSize is the most bytes m adds to an uncompressed v2 record
// batch of up to 2^27 records that share a timestamp: its size alone less
// the batch header, plus three bytes for an offset delta longer than the
// one byte soloBatchSize counts.
func batchedRecordSize(m *kafkago.Message) int {
	return soloBatchSize(m) - recordBatchOverhead + 3
}

// soloBatchSize is how many bytes m takes as the only record of a v2 record
// batch, uncompressed: what a broker compares with message.max.bytes when m
// is sent alone. Records of one Publish share their timestamp, so the
// timestamp and offset deltas of a solo record are one byte each.
func soloBatchSize(m *kafkago.Message) int {
	body := 1 + 1 + 1 // attributes, timestamp delta, offset delta
	body += nullableBytesSize(m.Key)
	body += nullableBytesSize(m.Value)
	body += varintSize(int64(len(m.Headers)))
	for _, h := range m.Headers {
		body += varintSize(int64(len(h.Key))) + len(h.Key)
		body += nullableBytesSize(h.Value)
	}
	return recordBatchOverhead + varintSize(int64(body)) + body
}

func nullableBytesSize(b []byte) int {
	if b == nil {
		return varintSize(-1)
	}
	return varintSize(int64(len(b))) + len(b)
}

// varintSize is the length of v as a zig-zag varint.
func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
