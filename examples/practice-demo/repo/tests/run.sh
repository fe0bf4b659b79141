# Runs every tests/test_*.sh; exits 1 if any fails.
status=0
for t in tests/test_*.sh; do
	if sh "$t"; then echo "ok   $t"; else echo "FAIL $t"; status=1; fi
done
exit $status
