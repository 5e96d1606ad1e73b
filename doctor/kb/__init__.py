"""Knowledge as data: compatibility tables, variables and messages, each entry with its source.

Code reads these tables; it does not embed the facts in if-chains.
"""

# The day the tables were last brought up to date with their sources (docs/knowledge.md says
# how). A machine with a release newer than what they know is told so with this date.
KB_DATE = "2026-12-01"
