"""The lab: measures in the plane and models trained on coupling systems."""
