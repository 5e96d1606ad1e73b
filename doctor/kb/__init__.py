"""Knowledge as data: compatibility tables, variables and messages, each entry with its source.

Code reads these tables; it does not embed the facts in if-chains.
"""
