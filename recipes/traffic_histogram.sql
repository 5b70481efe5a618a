-- Request log -> the histogram the Traffic page and `python -m kvmodel traffic` read.
-- Portable: runs unchanged on DuckDB, Spark SQL, Trino and BigQuery (tested on DuckDB).
--
-- In:  a table request_log with one row per request and an integer column prompt_tokens
--      (rename request_log to your table, e.g. `project.dataset.requests` on BigQuery).
-- Out: le       the bucket's upper bound in tokens (buckets of 256 tokens: 1-256 ->
--               256, 257-512 -> 512, ...; 0 -> 0); the app reads a bucket as its upper
--               bound, so lengths are rounded up, never down
--      requests how many requests fall in the bucket
-- Rows with no length or a negative one are left out, as the app skips them.
-- Export the result as CSV (with its header) and upload it on the Traffic page.
WITH lengths AS (
  SELECT
    prompt_tokens + MOD(256 - MOD(prompt_tokens, 256), 256) AS le
  FROM request_log
  WHERE prompt_tokens IS NOT NULL AND prompt_tokens >= 0
)
SELECT le, COUNT(*) AS requests
FROM lengths
GROUP BY le
ORDER BY le
