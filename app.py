"""sinkscope — see how a transformer relates two texts: softmax attention beside Sinkhorn
couplings. Run with ``make run`` (or ``streamlit run app.py``).

The app is the package's (``sinkscope_app/app.py``, which ``sinkscope app`` serves from an
installed wheel); this file only runs it.
"""

from sinkscope_app.app import main

main()
