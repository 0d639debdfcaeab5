"""LVAE's renderers (Gross & Wunder; PAPERS.md section 2). None yet: see README.md's status table."""
