"""The ``groupsim`` command line, its summaries, plots and reports."""
