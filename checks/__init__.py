"""The checks of `rocmdoctor check`, one module each, and their registry."""
