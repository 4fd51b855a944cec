// Package flowtext is what flow control says to people, in the CLI
// (delaybridge stats, topics, replicas, limit) and on the console: the
// limits in force and where they come from, why a topic is held, and a
// change of limits read as people type it. The words live here once, so
// the CLI and the console say the same; the state they describe, and its
// Redis keys, are flowstate's, which holds no wording.
//
// Files: limits.go (Limits: the limits in force, by group of replicas),
// held.go (HeldWhy: why a topic is held), override.go (ParseOverride: a
// change of limits from a flag or a form).
package flowtext
