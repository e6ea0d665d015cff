"""The Lua scripts: each built from lua/ and its spec (and the hot ones as one
Functions library), and sent by FCALL or EVALSHA.
"""
