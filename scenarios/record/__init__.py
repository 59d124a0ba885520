"""``groupsim record``: hold groupsim against a real Kafka cluster.

:mod:`.proxy` is a Kafka-protocol proxy clients bootstrap from; :mod:`.trace` writes what
crossed it as ``trace.jsonl`` (the wire, decoded) and ``events.jsonl`` (groupsim's event log,
judged by ``groupsim check``); :mod:`.frames` reads and rewrites Kafka frames with kio.
"""
