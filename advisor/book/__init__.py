"""The declarations: every rulebook's schema and loader (plain dataclasses, advisor/schema.py),
read from the YAML under `rulebook/` that a practitioner edits. The bottom of the package above
its ground floor (types, resources, schema): nothing here imports the engine, the job config,
the readers or anything that judges or reports (docs/develop.md, "Layers").
"""


def load_shipped() -> None:
    """Load the shipped rulebooks every diagnosis reads (each is cached for the process): the
    symptom rules, the config rules and the name tables. The command does it while the run is
    read (advisor.api). A rulebook that does not load is said where it is first used."""
    import contextlib

    from advisor.book.config import rulebook
    from advisor.book.dialects import dialects
    from advisor.book.symptoms import load_symptom_rules
    from advisor.types import InputError

    for load in (load_symptom_rules, rulebook, dialects):
        with contextlib.suppress(InputError):
            load()
