"""Renderers: pure functions of results and gathered facts; they never see a Host."""
