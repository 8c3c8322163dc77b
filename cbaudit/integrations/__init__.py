"""Code that runs inside other systems (vLLM's engine), importing them only when they run it.

Nothing here imports any other part of cbaudit: a serving process that loads the recorder
loads this package and the standard library, no more.
"""
