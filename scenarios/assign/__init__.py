"""``groupsim assign``: run one assignor (Connect or Kafka Streams) over JSON input."""
