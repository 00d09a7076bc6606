-- The ancestors of a reservation's key, nearest first, comma-separated ('' for a root): whoever
-- concludes the reservation (another replica, the sweeper) moves every spend row it held. Its
-- own migration, apart from api_keys' (20261126003541_key_tree).
ALTER TABLE reservations ADD COLUMN key_chain TEXT NOT NULL DEFAULT '';
