"""Khalil's methods (seed 004): MDH tables, closed loops, parallel robots, elastic joints."""
