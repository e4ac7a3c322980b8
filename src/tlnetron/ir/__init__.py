"""Stage 0, the intermediate representation: the trace's ops and calls as read (``trace``),
the per-op facts the metric table sums (``facts``), and the drawing the views make of them
(``drawing``). Records only: every later stage reads these, none of them reads a later stage."""
