"""The declarations: every rulebook's schema and loader (plain dataclasses, advisor/schema.py),
read from the YAML under `rulebook/` that a practitioner edits. The bottom of the package above
its ground floor (types, resources, schema): nothing here imports the engine, the job config,
the readers or anything that judges or reports (docs/develop.md, "Layers").
"""
