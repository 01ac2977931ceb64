-- A buyer's purchases, newest first (the My purchases page): found by an index, not a scan.
create index purchases_buyer on purchases ((doc->>'buyer'), ((doc->>'at')::bigint) desc);
