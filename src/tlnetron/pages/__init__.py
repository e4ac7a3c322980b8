"""Stage 7, pages: Netron served from 127.0.0.1, the one-file ``.html`` page, the notebook
view, the heat map's colour schemes and pictures rendered from headless Chromium."""
