"""Three questions asked of the job's Parquet output, in Spark SQL and in DuckDB.
docs/spark.md shows the same text; the Spark test runs both and checks the answers
against the command line's records."""

# Spark SQL over the views `calls` and `findings` (spark.read.parquet(...)
# .createOrReplaceTempView(...)).
SPARK = {
    "failure_rate": """
SELECT tool,
       to_date(started_at) AS day,
       count(*) AS calls,
       round(avg(CASE WHEN outcome IN ('TOOL_SUCCESS', 'INPUT_REQUIRED') THEN 0 ELSE 1 END), 4)
         AS failure_rate
FROM calls
GROUP BY tool, to_date(started_at)
ORDER BY day, tool
""",
    "unsafe_replays": """
SELECT c.client, count(*) AS unsafe_replays
FROM findings f
JOIN (SELECT input, scope, max(client) AS client FROM calls GROUP BY input, scope) c
  ON c.input = f.input AND c.scope = f.scope
WHERE f.kind = 'UNSAFE_REPLAY'
GROUP BY c.client
ORDER BY unsafe_replays DESC, c.client
""",
    "slowest_servers": """
SELECT coalesce(server, '(not named)') AS server,
       count(*) AS calls,
       round(avg((unix_micros(ended_at) - unix_micros(started_at)) / 1000.0), 3) AS avg_ms,
       round(max((unix_micros(ended_at) - unix_micros(started_at)) / 1000.0), 3) AS max_ms
FROM calls
WHERE ended_at IS NOT NULL
GROUP BY coalesce(server, '(not named)')
ORDER BY max_ms DESC, server
""",
}

# DuckDB straight over the Parquet files (OUT is the job's output directory).
DUCKDB = {
    "failure_rate": """
SELECT tool,
       CAST(started_at AS DATE) AS day,
       count(*) AS calls,
       round(avg(CASE WHEN outcome IN ('TOOL_SUCCESS', 'INPUT_REQUIRED') THEN 0 ELSE 1 END), 4)
         AS failure_rate
FROM 'OUT/calls/*.parquet'
GROUP BY ALL
ORDER BY day, tool
""",
    "unsafe_replays": """
SELECT c.client, count(*) AS unsafe_replays
FROM 'OUT/findings/*.parquet' f
JOIN (SELECT input, scope, max(client) AS client
      FROM 'OUT/calls/*.parquet' GROUP BY ALL) c USING (input, scope)
WHERE f.kind = 'UNSAFE_REPLAY'
GROUP BY c.client
ORDER BY unsafe_replays DESC, c.client
""",
    "slowest_servers": """
SELECT coalesce(server, '(not named)') AS server,
       count(*) AS calls,
       round(avg(epoch_us(ended_at) - epoch_us(started_at)) / 1000.0, 3) AS avg_ms,
       round(max(epoch_us(ended_at) - epoch_us(started_at)) / 1000.0, 3) AS max_ms
FROM 'OUT/calls/*.parquet'
WHERE ended_at IS NOT NULL
GROUP BY ALL
ORDER BY max_ms DESC, server
""",
}
