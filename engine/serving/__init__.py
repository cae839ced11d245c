"""Serving: the Ray Serve deployment, its schemas and routes, the client, the wire."""
