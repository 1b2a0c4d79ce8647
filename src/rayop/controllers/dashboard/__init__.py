"""The client of a Ray head's dashboard HTTP API (jobs, Serve applications), its transport,
errors and models.
"""
