-- wrk script for the write cases of bench/run: sends METHOD (default POST) with the JSON body
-- from the environment variable BODY. Authorization comes from wrk's -H option.
wrk.method = os.getenv("METHOD") or "POST"
wrk.body = os.getenv("BODY")
wrk.headers["Content-Type"] = "application/json"
