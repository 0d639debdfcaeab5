"""Marginal-based baselines of P3GM (PrivBayes, Ryan's NIST-2018 method): numpy/mbi implementations behind `methods/`."""
