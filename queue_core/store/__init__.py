"""The store: models, opening and migrating the database, and ``JobRepository``, which owns every transition."""
