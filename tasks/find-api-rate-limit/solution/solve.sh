mkdir -p scratch && grep -n '^API_RATE_LIMIT=' logs/diagnostic.log > scratch/rate_limit.txt

value=$(cut -d= -f2 scratch/rate_limit.txt | tail -n 1) && line=$(cut -d: -f1 scratch/rate_limit.txt | tail -n 1) && echo "The API rate limit is currently configured as API_RATE_LIMIT=${value} (set by the config reload at line ${line} of logs/diagnostic.log; the commented-out 3000 near the top is an old value and 8750 is the burst limit, not the rate limit)."
