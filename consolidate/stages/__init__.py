"""The pipeline's stages, one module each, in SPEC section 4 order.

Every stage is ``stage(plan, ctx) -> plan``: it reads (the session tier, the long-term tier, the
judges), decides, and adds decisions to the plan. Only ``apply`` writes.
"""

ORDER = ("count", "purge", "secret_gate", "flag_promote", "judge", "write_policy", "contradiction",
         "provenance", "apply")
