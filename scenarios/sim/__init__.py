"""The deterministic engine: one ordered queue drives the coordinator and the members of either
kind of group (Kafka Connect workers or Kafka Streams clients)."""
