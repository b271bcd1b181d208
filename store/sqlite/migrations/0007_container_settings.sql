-- 0007: a container policy's settings (the container backend): its image,
-- CPU limit, network, and the environment names and volumes passed to
-- each container (JSON arrays of strings; '' for none).

ALTER TABLE policies ADD COLUMN container_image TEXT NOT NULL DEFAULT '';
ALTER TABLE policies ADD COLUMN container_cpus REAL NOT NULL DEFAULT 0;
ALTER TABLE policies ADD COLUMN container_network TEXT NOT NULL DEFAULT '';
ALTER TABLE policies ADD COLUMN container_env TEXT NOT NULL DEFAULT '';
ALTER TABLE policies ADD COLUMN container_volumes TEXT NOT NULL DEFAULT '';
