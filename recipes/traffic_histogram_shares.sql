-- Request log -> the share of requests per bucket, without saying how many there were
-- (a histogram to pass outside the team). Use traffic_histogram.sql when counts may go
-- out: from shares alone the app gives no request count and, without a rate, no load.
-- Portable: runs unchanged on DuckDB, Spark SQL, Trino and BigQuery (tested on DuckDB).
--
-- In:  request_log(prompt_tokens integer), one row per request.
-- Out: le     the bucket's upper bound in tokens (256-token buckets, as in
--             traffic_histogram.sql)
--      share  the bucket's share of all requests, 0-1; the shares add up to 1
-- 1e0 is a floating-point literal: Trino divides integers as integers.
WITH lengths AS (
  SELECT prompt_tokens + MOD(256 - MOD(prompt_tokens, 256), 256) AS le
  FROM request_log
  WHERE prompt_tokens IS NOT NULL AND prompt_tokens >= 0
)
SELECT le, COUNT(*) * 1e0 / SUM(COUNT(*)) OVER () AS share
FROM lengths
GROUP BY le
ORDER BY le
