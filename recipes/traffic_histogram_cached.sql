-- Request log with prefix-cache hits -> histogram of the tokens whose KV must move.
-- Portable: runs unchanged on DuckDB, Spark SQL, Trino and BigQuery (tested on DuckDB).
--
-- In:  request_log(prompt_tokens integer, cached_tokens integer): cached_tokens are the
--      prompt tokens served from the prefix cache (vLLM's num_cached_tokens, OpenAI's
--      usage.prompt_tokens_details.cached_tokens); no value counts as no hit.
-- Out: le       upper bound (256-token buckets) of the uncached prompt tokens,
--               prompt_tokens - cached_tokens, never below 0
--      requests how many requests fall in the bucket
-- The hits are already taken off: leave the app's prefix-cache hit ratio at 0.
WITH moved AS (
  SELECT
    CASE
      WHEN COALESCE(cached_tokens, 0) >= prompt_tokens THEN 0
      ELSE prompt_tokens - COALESCE(cached_tokens, 0)
    END AS tokens
  FROM request_log
  WHERE prompt_tokens IS NOT NULL AND prompt_tokens >= 0
),
buckets AS (
  SELECT tokens + MOD(256 - MOD(tokens, 256), 256) AS le
  FROM moved
)
SELECT le, COUNT(*) AS requests
FROM buckets
GROUP BY le
ORDER BY le
