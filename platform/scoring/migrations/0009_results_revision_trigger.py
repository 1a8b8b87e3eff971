"""Every statement that writes correlation or significance results moves the results revision, in
its transaction (scoring.models.ResultsRevision): the services, the admin, cascades and bulk
updates alike. Statement-level, so a cascade of a thousand rows moves it once per statement."""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION scoring_results_revision_bump() RETURNS trigger AS $$
BEGIN
    INSERT INTO scoring_resultsrevision (id, number) VALUES (1, 1)
    ON CONFLICT (id) DO UPDATE SET number = scoring_resultsrevision.number + 1;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
"""
TABLES = ("scoring_correlationresult", "scoring_significanceresult")


def triggers() -> str:
    return "".join(
        f"CREATE TRIGGER {table}_revision AFTER INSERT OR UPDATE OR DELETE ON {table} "
        "FOR EACH STATEMENT EXECUTE FUNCTION scoring_results_revision_bump();\n"
        for table in TABLES
    )


def dropped() -> str:
    return "".join(f"DROP TRIGGER IF EXISTS {table}_revision ON {table};\n" for table in TABLES) + (
        "DROP FUNCTION IF EXISTS scoring_results_revision_bump();\n"
    )


class Migration(migrations.Migration):
    dependencies = [("scoring", "0008_results_revision")]

    operations = [migrations.RunSQL(FUNCTION + triggers(), dropped())]
