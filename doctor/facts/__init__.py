"""Typed readers of machine facts, built on a Host: each fact is read in one place."""
