"""Stage 1 and 2: spec text in, checked model out.

``load`` turns YAML and jsonnet into documents that remember where every value was
written; ``schema`` checks them against ``compiler/schemas/``; ``build`` and ``registry`` check
what a schema cannot say and build the frozen model. Nothing here knows a target.
"""
