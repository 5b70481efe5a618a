-- Request log -> requests per exact prompt length (no rounding at all).
-- Portable: runs unchanged on DuckDB, Spark SQL, Trino and BigQuery (tested on DuckDB).
--
-- In:  request_log(prompt_tokens integer), one row per request.
-- Out: prompt_tokens  a prompt length in tokens
--      requests       how many requests had exactly that length
-- One row per distinct length: a few hundred thousand rows at most, whatever the
-- traffic.
WITH kept AS (
  SELECT prompt_tokens
  FROM request_log
  WHERE prompt_tokens IS NOT NULL AND prompt_tokens >= 0
)
SELECT prompt_tokens, COUNT(*) AS requests
FROM kept
GROUP BY prompt_tokens
ORDER BY prompt_tokens
