"""Input: scenario files (Connect and Kafka Streams), sweep files and ``groupsim assign`` JSON,
decoded into msgspec Structs; every problem is one :class:`ScenarioError` line naming the file,
the key path and what is wrong."""
