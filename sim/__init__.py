"""The deployment simulator: the synthesized stack run the way AWS would, on moto."""
