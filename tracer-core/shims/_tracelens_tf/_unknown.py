"""Defines nothing: every attribute of this module is an unknown value to tracelens."""
