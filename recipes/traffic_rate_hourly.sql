-- Request log -> requests per second in each hour, busiest first: the rate to give the
-- Traffic page (or --rps) when the histogram carries no times.
-- Portable: runs unchanged on DuckDB, Spark SQL, Trino and BigQuery (tested on DuckDB).
--
-- In:  request_log(timestamp TIMESTAMP, prompt_tokens integer), as in
--      traffic_histogram_hourly.sql.
-- Out: log_date, log_hour  the day and the hour of day (0-23)
--      requests            requests that arrived in that hour
--      rps                 requests / 3600 s: the hour's mean rate, requests per second
--      mean_prompt_tokens  their mean prompt length in tokens
-- 3600e0 and 1e0 are floating-point literals: Trino divides integers as integers.
WITH hours AS (
  SELECT
    CAST(timestamp AS DATE) AS log_date,
    EXTRACT(HOUR FROM timestamp) AS log_hour,
    prompt_tokens
  FROM request_log
  WHERE prompt_tokens IS NOT NULL AND prompt_tokens >= 0 AND timestamp IS NOT NULL
)
SELECT
  log_date,
  log_hour,
  COUNT(*) AS requests,
  COUNT(*) / 3600e0 AS rps,
  SUM(prompt_tokens) * 1e0 / COUNT(*) AS mean_prompt_tokens
FROM hours
GROUP BY log_date, log_hour
ORDER BY requests DESC, log_date, log_hour
