"""The products of the plan, one part per module, composed by ``plan.build.Plan``."""
