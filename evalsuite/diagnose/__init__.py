"""Why served vectors disagree with the reference: hypotheses, their scoring and the triage checklist.

- :mod:`.hypotheses` declares every way a deployment can depart from the contract (one
  :class:`~.hypotheses.Factor` each: its triage stage, how its cause reads, its remedy per engine) and
  the :class:`~.hypotheses.Alternative` a served vector may have been made under;
- :mod:`.score` is pure numpy: the cheap derivations (normalization, Matryoshka cut, re-normalization,
  output rounding) and how well each alternative explains the served vectors (:class:`~.score.Diagnosis`);
- :mod:`.precision` judges whether vectors no alternative explains depart as reduced precision makes them;
- :mod:`.engines` reads what a server says about itself (engine, max length) from ``/v1/models``;
- :mod:`.local` computes the alternatives' pooled vectors with the local reference, in as few forward
  passes as the hypotheses need (torch only here);
- :mod:`.canary` runs a diagnosis for a failed canary check; :mod:`.triage` orders the verdicts and
  the diagnosis as the checklist an engineer debugs with.

Imports here stay light: numpy at most, until :mod:`.local` runs.
"""
