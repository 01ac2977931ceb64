-- The market's tables on PostgreSQL. Each record is stored whole as a JSON document (`doc`), as
-- the LevelDB engine stores it, so a field added to a record later passes through unchanged; the
-- columns that are filtered, sorted or made unique on are generated from the document and indexed.

create table sessions (k text primary key, doc jsonb not null);
create table nonces (k text primary key, doc jsonb not null);
create table challenges (k text primary key, doc jsonb not null);
-- A consumed challenge: the primary key lets exactly one transaction consume it.
create table consumed_challenges (k text primary key, at bigint not null);
create table agent_keys (
  k text primary key,
  doc jsonb not null,
  account text generated always as (doc->>'account') stored,
  wallet text generated always as (doc->>'wallet') stored,
  created_at bigint generated always as ((doc->>'createdAt')::bigint) stored
);
create index agent_keys_account on agent_keys (account, created_at);
create index agent_keys_wallet on agent_keys (wallet, created_at);
create table key_hashes (k text primary key, doc jsonb not null);
-- A transaction hash spent on a purchase: the primary key lets exactly one purchase use it.
create table used_tx (k text primary key, doc jsonb not null);
create table purchases (k text primary key, doc jsonb not null);
create table verifications (k text primary key, doc jsonb not null);
-- `<key id>!<Idempotency-Key>` → the first answer: the primary key makes a retried upload list once.
create table listing_idempotency (k text primary key, doc jsonb not null);

create table listings (
  k text primary key,
  doc jsonb not null,
  created_at bigint generated always as ((doc->>'createdAt')::bigint) stored,
  price_wei numeric(78, 0) generated always as ((doc->>'priceWei')::numeric) stored,
  row_count bigint generated always as ((doc->>'rows')::bigint) stored,
  machine_type text generated always as (doc->>'machineType') stored,
  license text generated always as (doc->>'license') stored,
  agent_id text generated always as (doc->>'agentId') stored,
  sample boolean generated always as ((doc->>'sample')::boolean) stored,
  -- Search is word for word over the title and summary ('simple': no stemming, no stop words,
  -- the same words the LevelDB engine indexes).
  search tsvector generated always as (
    to_tsvector('simple', coalesce(doc->>'title', '') || ' ' || coalesce(doc->>'summary', ''))
  ) stored
);
-- One index per sort order (keyset: `(value, slug)` past the cursor), the common filters before it.
create index listings_newest on listings (created_at desc, k);
create index listings_price on listings (price_wei, k);
create index listings_rows on listings (row_count desc, k);
create index listings_type_newest on listings (machine_type, created_at desc, k);
create index listings_license_newest on listings (license, created_at desc, k);
create index listings_search on listings using gin (search);
create index listings_agent on listings (agent_id, created_at desc, k) where not sample;

-- Counters kept by the trigger below in the writing transaction: browse totals for no filter, a
-- machine type, a licence or both, and an agent's listings and rows, each read as one row.
create table listing_counts (k text primary key, n bigint not null, row_sum bigint not null);

create function listing_count_keys(d jsonb) returns text[] language sql immutable as $$
  select array['*', 'm=' || (d->>'machineType'), 'l=' || (d->>'license'),
               'm=' || (d->>'machineType') || ',l=' || (d->>'license')]
         || case when (d->>'sample')::boolean then array[]::text[] else array['a=' || (d->>'agentId')] end
$$;

create function listing_counts_add(d jsonb, sign int) returns void language sql as $$
  insert into listing_counts (k, n, row_sum)
  select key, sign, sign * (d->>'rows')::bigint from unnest(listing_count_keys(d)) as key
  order by key
  on conflict (k) do update
    set n = listing_counts.n + excluded.n, row_sum = listing_counts.row_sum + excluded.row_sum
$$;

create function listings_counted() returns trigger language plpgsql as $$
begin
  if tg_op in ('UPDATE', 'DELETE') then perform listing_counts_add(old.doc, -1); end if;
  if tg_op in ('INSERT', 'UPDATE') then perform listing_counts_add(new.doc, 1); end if;
  return null;
end
$$;

create trigger listings_counted after insert or update or delete on listings
  for each row execute function listings_counted();

-- Secrets every instance shares (the session cookie key): the first instance's value wins.
create table shared_secrets (k text primary key, v text not null);
