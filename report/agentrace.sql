-- agentrace.sql: DuckDB macros for agentrace's analysis tables (turns.parquet,
-- points.parquet). Load it once per session:
--   duckdb -c ".read agentrace.sql" ...          (the DuckDB shell)
--   con.execute(open("agentrace.sql").read())     (Python)
-- agentrace report writes a copy into every report folder; docs/analysis.md shows
-- queries that reproduce points.json with it.

-- lower_percentile(x, p): the MLPerf Endpoints rules' "lower" percentile p (0..100)
-- of the non-null values of x in the group: sort them, and take the value at
-- 0-based index floor(p / 100 * (n - 1)): always an observed value, never an
-- interpolation. The index is computed in DOUBLE, exactly as agentrace's report
-- computes it, so the result equals points.json bit for bit. NULL for no values.
-- DuckDB's quantile_disc(x, p / 100) is NOT the same: it picks the sample by its own
-- index rule, which can be a higher one (on the values 1..10 its 99th percentile is
-- 10; the rules' is 9, the value at index floor(0.99 * 9) = 8).
CREATE OR REPLACE MACRO lower_percentile(x, p) AS
    list_sort(list(x) FILTER (WHERE x IS NOT NULL))[
        CAST(floor(CAST(p AS DOUBLE) / CAST(100 AS DOUBLE) * CAST(count(x) - 1 AS DOUBLE)) AS BIGINT) + 1];
