-- vpod's SQLite schema at revision 0015_inventory_version: python -m vpod.store.fresh_sqlite

CREATE TABLE agent_bindings (
	agent_id VARCHAR(63) NOT NULL, 
	token_id VARCHAR(32) NOT NULL, 
	bound_at DATETIME NOT NULL, 
	CONSTRAINT pk_agent_bindings PRIMARY KEY (agent_id), 
	CONSTRAINT fk_agent_bindings_agent_id_agents FOREIGN KEY(agent_id) REFERENCES agents (id) ON DELETE CASCADE, 
	CONSTRAINT fk_agent_bindings_token_id_agent_tokens FOREIGN KEY(token_id) REFERENCES agent_tokens (id) ON DELETE CASCADE
);

CREATE TABLE agent_keys (
	agent_id VARCHAR(63) NOT NULL, 
	host VARCHAR(255) NOT NULL, 
	port INTEGER NOT NULL, 
	agent_key VARCHAR(255) NOT NULL, 
	updated_at DATETIME NOT NULL, 
	CONSTRAINT pk_agent_keys PRIMARY KEY (agent_id)
);

CREATE TABLE agent_tokens (
	id VARCHAR(32) NOT NULL, 
	key_hash VARCHAR(255) NOT NULL, 
	label VARCHAR(255) NOT NULL, 
	created_at DATETIME NOT NULL, 
	CONSTRAINT pk_agent_tokens PRIMARY KEY (id)
);

CREATE TABLE agents (
	id VARCHAR(63) NOT NULL, 
	host VARCHAR(255) NOT NULL, 
	port INTEGER NOT NULL, 
	machine_type VARCHAR(32) NOT NULL, 
	serial VARCHAR(128) NOT NULL, 
	health VARCHAR(32) NOT NULL, 
	last_heartbeat DATETIME, 
	health_reason TEXT NOT NULL, device_faults JSON, ipuof_facts JSON, 
	CONSTRAINT pk_agents PRIMARY KEY (id)
);

CREATE TABLE alembic_version (
	version_num VARCHAR(32) NOT NULL, 
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);

INSERT INTO "alembic_version" VALUES('0015_inventory_version');

CREATE TABLE allocation_machines (
	cluster_id VARCHAR(63) NOT NULL, 
	machine INTEGER NOT NULL, 
	allocation_id VARCHAR(63) NOT NULL, 
	CONSTRAINT pk_allocation_machines PRIMARY KEY (cluster_id, machine), 
	CONSTRAINT fk_allocation_machines_allocation FOREIGN KEY(allocation_id, cluster_id) REFERENCES allocations (id, cluster_id) ON DELETE CASCADE, 
	CONSTRAINT fk_allocation_machines_cluster_machine FOREIGN KEY(cluster_id, machine) REFERENCES cluster_agents (cluster_id, position), 
	CONSTRAINT uq_allocation_machines_allocation_id_cluster_id_machine UNIQUE (allocation_id, cluster_id, machine)
);

CREATE TABLE allocations (
	id VARCHAR(63) NOT NULL, 
	cluster_id VARCHAR(63) NOT NULL, hosts JSON, 
	CONSTRAINT pk_allocations PRIMARY KEY (id), 
	CONSTRAINT fk_allocations_cluster_id_clusters FOREIGN KEY(cluster_id) REFERENCES clusters (id), 
	CONSTRAINT uq_allocations_id_cluster_id UNIQUE (id, cluster_id)
);

CREATE TABLE cloud_cluster_keypairs (
	cluster_id VARCHAR(63) NOT NULL, 
	keypair_id VARCHAR(63) NOT NULL, 
	CONSTRAINT pk_cloud_cluster_keypairs PRIMARY KEY (cluster_id, keypair_id), 
	CONSTRAINT fk_cloud_cluster_keypairs_cluster_id_cloud_clusters FOREIGN KEY(cluster_id) REFERENCES cloud_clusters (id) ON DELETE CASCADE, 
	CONSTRAINT fk_cloud_cluster_keypairs_keypair_id_cloud_keypairs FOREIGN KEY(keypair_id) REFERENCES cloud_keypairs (id)
);

CREATE TABLE cloud_clusters (
	id VARCHAR(63) NOT NULL, 
	project_id VARCHAR(63) NOT NULL, 
	name VARCHAR(63) NOT NULL, 
	flavor VARCHAR(64) NOT NULL, 
	kind VARCHAR(32) NOT NULL, 
	status VARCHAR(32) NOT NULL, 
	image VARCHAR(64) NOT NULL, 
	server_count INTEGER NOT NULL, 
	ipus INTEGER NOT NULL, 
	gpu_family VARCHAR(32), 
	gpus INTEGER NOT NULL, 
	interfaces JSON NOT NULL, 
	network JSON NOT NULL, 
	metadata JSON NOT NULL, 
	vipu_cluster_id VARCHAR(63), 
	allocation_id VARCHAR(63), 
	vipu_user_id VARCHAR(63), 
	saved_partitions JSON, 
	fabric VARCHAR(64), 
	active_task_id VARCHAR(63), 
	error TEXT NOT NULL, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	CONSTRAINT pk_cloud_clusters PRIMARY KEY (id), 
	CONSTRAINT fk_cloud_clusters_project_id_cloud_projects FOREIGN KEY(project_id) REFERENCES cloud_projects (id), 
	CONSTRAINT uq_cloud_clusters_project_id_name UNIQUE (project_id, name)
);

CREATE TABLE cloud_dataset_attachments (
	cluster_id VARCHAR(63) NOT NULL, 
	storage_id VARCHAR(63) NOT NULL, 
	mount_path VARCHAR(255), 
	CONSTRAINT pk_cloud_dataset_attachments PRIMARY KEY (cluster_id), 
	CONSTRAINT fk_cloud_dataset_attachments_cluster_id_cloud_clusters FOREIGN KEY(cluster_id) REFERENCES cloud_clusters (id) ON DELETE CASCADE, 
	CONSTRAINT fk_cloud_dataset_attachments_storage_id_cloud_dataset_storages FOREIGN KEY(storage_id) REFERENCES cloud_dataset_storages (id)
);

CREATE TABLE cloud_dataset_storages (
	id VARCHAR(63) NOT NULL, 
	project_id VARCHAR(63) NOT NULL, 
	name VARCHAR(63) NOT NULL, 
	endpoint VARCHAR(64) NOT NULL, 
	bucket VARCHAR(64) NOT NULL, 
	access_key_masked VARCHAR(64) NOT NULL, 
	access_key_sealed TEXT NOT NULL, 
	secret_key_sealed TEXT NOT NULL, 
	created_at DATETIME NOT NULL, 
	CONSTRAINT pk_cloud_dataset_storages PRIMARY KEY (id), 
	CONSTRAINT fk_cloud_dataset_storages_project_id_cloud_projects FOREIGN KEY(project_id) REFERENCES cloud_projects (id), 
	CONSTRAINT uq_cloud_dataset_storages_project_id_name UNIQUE (project_id, name)
);

CREATE TABLE cloud_gpu_agents (
	host_id VARCHAR(63) NOT NULL, 
	token_id VARCHAR(32), 
	boot_id VARCHAR(64) NOT NULL, 
	hostname VARCHAR(255) NOT NULL, 
	driver_version VARCHAR(64) NOT NULL, 
	cuda_version VARCHAR(64) NOT NULL, 
	backend VARCHAR(32) NOT NULL, 
	registered_at DATETIME NOT NULL, 
	reported_at DATETIME NOT NULL, 
	CONSTRAINT pk_cloud_gpu_agents PRIMARY KEY (host_id), 
	CONSTRAINT fk_cloud_gpu_agents_host_id_cloud_hosts FOREIGN KEY(host_id) REFERENCES cloud_hosts (id) ON DELETE CASCADE
);

CREATE TABLE cloud_host_gpus (
	host_id VARCHAR(63) NOT NULL, 
	idx INTEGER NOT NULL, 
	uuid VARCHAR(64) NOT NULL, 
	name VARCHAR(64) NOT NULL, 
	memory_mib INTEGER NOT NULL, 
	pci_bus_id VARCHAR(64) NOT NULL, 
	details JSON NOT NULL, 
	healthy BOOLEAN NOT NULL, 
	problems TEXT NOT NULL, 
	changed_at DATETIME NOT NULL, 
	CONSTRAINT pk_cloud_host_gpus PRIMARY KEY (host_id, idx), 
	CONSTRAINT fk_cloud_host_gpus_host_id_cloud_hosts FOREIGN KEY(host_id) REFERENCES cloud_hosts (id) ON DELETE CASCADE, 
	CONSTRAINT uq_cloud_host_gpus_uuid UNIQUE (uuid)
);

CREATE TABLE cloud_host_slots (
	host_id VARCHAR(63) NOT NULL, 
	slot INTEGER NOT NULL, 
	server_id VARCHAR(63) NOT NULL, 
	CONSTRAINT pk_cloud_host_slots PRIMARY KEY (host_id, slot), 
	CONSTRAINT fk_cloud_host_slots_host_id_cloud_hosts FOREIGN KEY(host_id) REFERENCES cloud_hosts (id), 
	CONSTRAINT fk_cloud_host_slots_server_id_cloud_servers FOREIGN KEY(server_id) REFERENCES cloud_servers (id) ON DELETE CASCADE
);

CREATE TABLE cloud_hosts (
	id VARCHAR(63) NOT NULL, 
	role VARCHAR(32) NOT NULL, 
	model VARCHAR(64) NOT NULL, 
	slots INTEGER NOT NULL, 
	fabric VARCHAR(64), 
	address VARCHAR(255) NOT NULL, 
	enabled BOOLEAN NOT NULL, 
	registered_at DATETIME NOT NULL, 
	CONSTRAINT pk_cloud_hosts PRIMARY KEY (id)
);

CREATE TABLE cloud_keypairs (
	id VARCHAR(63) NOT NULL, 
	project_id VARCHAR(63) NOT NULL, 
	name VARCHAR(63) NOT NULL, 
	key_type VARCHAR(64) NOT NULL, 
	public_key TEXT NOT NULL, 
	fingerprint VARCHAR(64) NOT NULL, 
	created_at DATETIME NOT NULL, 
	CONSTRAINT pk_cloud_keypairs PRIMARY KEY (id), 
	CONSTRAINT fk_cloud_keypairs_project_id_cloud_projects FOREIGN KEY(project_id) REFERENCES cloud_projects (id), 
	CONSTRAINT uq_cloud_keypairs_project_id_name UNIQUE (project_id, name)
);

CREATE TABLE cloud_metering (
	id INTEGER NOT NULL, 
	time DATETIME NOT NULL, 
	project_id VARCHAR(63) NOT NULL, 
	resource_type VARCHAR(32) NOT NULL, 
	resource_id VARCHAR(63) NOT NULL, 
	resource_name VARCHAR(63) NOT NULL, 
	item VARCHAR(64) NOT NULL, 
	quantity INTEGER NOT NULL, 
	unit_price_per_hour VARCHAR(32) NOT NULL, 
	billable BOOLEAN NOT NULL, 
	state VARCHAR(32) NOT NULL, 
	CONSTRAINT pk_cloud_metering PRIMARY KEY (id)
);

CREATE TABLE cloud_pool_units (
	pool VARCHAR(64) NOT NULL, 
	unit INTEGER NOT NULL, 
	CONSTRAINT pk_cloud_pool_units PRIMARY KEY (pool, unit)
);

CREATE TABLE cloud_projects (
	id VARCHAR(63) NOT NULL, 
	name VARCHAR(255) NOT NULL, 
	quotas JSON NOT NULL, 
	created_at DATETIME NOT NULL, deleted_at DATETIME, 
	CONSTRAINT pk_cloud_projects PRIMARY KEY (id)
);

CREATE TABLE cloud_reservations (
	id VARCHAR(63) NOT NULL, 
	project_id VARCHAR(63) NOT NULL, 
	flavor VARCHAR(64) NOT NULL, 
	pool VARCHAR(64) NOT NULL, 
	units INTEGER NOT NULL, 
	per_unit INTEGER NOT NULL, 
	term VARCHAR(32) NOT NULL, 
	price_per_unit_month VARCHAR(32) NOT NULL, 
	starts_at DATETIME NOT NULL, 
	ends_at DATETIME NOT NULL, 
	cancelled_at DATETIME, 
	billed_until DATETIME, 
	CONSTRAINT pk_cloud_reservations PRIMARY KEY (id), 
	CONSTRAINT fk_cloud_reservations_project_id_cloud_projects FOREIGN KEY(project_id) REFERENCES cloud_projects (id)
);

CREATE TABLE cloud_reserved_units (
	pool VARCHAR(64) NOT NULL, 
	unit INTEGER NOT NULL, 
	reservation_id VARCHAR(63) NOT NULL, 
	CONSTRAINT pk_cloud_reserved_units PRIMARY KEY (pool, unit), 
	CONSTRAINT fk_cloud_reserved_units_pool_unit FOREIGN KEY(pool, unit) REFERENCES cloud_pool_units (pool, unit), 
	CONSTRAINT fk_cloud_reserved_units_reservation_id_cloud_reservations FOREIGN KEY(reservation_id) REFERENCES cloud_reservations (id) ON DELETE CASCADE
);

CREATE TABLE cloud_servers (
	id VARCHAR(63) NOT NULL, 
	cluster_id VARCHAR(63) NOT NULL, 
	position INTEGER NOT NULL, 
	name VARCHAR(63) NOT NULL, 
	status VARCHAR(32) NOT NULL, 
	image VARCHAR(64) NOT NULL, 
	host_id VARCHAR(63), 
	address VARCHAR(255) NOT NULL, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	CONSTRAINT pk_cloud_servers PRIMARY KEY (id), 
	CONSTRAINT fk_cloud_servers_cluster_id_cloud_clusters FOREIGN KEY(cluster_id) REFERENCES cloud_clusters (id) ON DELETE CASCADE, 
	CONSTRAINT uq_cloud_servers_cluster_id_position UNIQUE (cluster_id, position)
);

CREATE TABLE cloud_ssh_ports (
	port INTEGER NOT NULL, 
	server_id VARCHAR(63) NOT NULL, 
	assigned_at DATETIME NOT NULL, 
	CONSTRAINT pk_cloud_ssh_ports PRIMARY KEY (port), 
	CONSTRAINT fk_cloud_ssh_ports_server_id_cloud_servers FOREIGN KEY(server_id) REFERENCES cloud_servers (id) ON DELETE CASCADE, 
	CONSTRAINT uq_cloud_ssh_ports_server_id UNIQUE (server_id)
);

CREATE TABLE cloud_tasks (
	id VARCHAR(63) NOT NULL, 
	project_id VARCHAR(63) NOT NULL, 
	operation VARCHAR(32) NOT NULL, 
	resource_type VARCHAR(32) NOT NULL, 
	resource_id VARCHAR(63) NOT NULL, 
	resource_name VARCHAR(63) NOT NULL, 
	state VARCHAR(32) NOT NULL, 
	detailed_state VARCHAR(32), 
	phases JSON NOT NULL, 
	params JSON NOT NULL, 
	error TEXT NOT NULL, 
	warnings JSON NOT NULL, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	finished_at DATETIME, 
	CONSTRAINT pk_cloud_tasks PRIMARY KEY (id)
);

CREATE TABLE cloud_tokens (
	id VARCHAR(32) NOT NULL, 
	project_id VARCHAR(63), 
	key_hash VARCHAR(255) NOT NULL, 
	label VARCHAR(255) NOT NULL, 
	created_at DATETIME NOT NULL, 
	CONSTRAINT pk_cloud_tokens PRIMARY KEY (id), 
	CONSTRAINT fk_cloud_tokens_project_id_cloud_projects FOREIGN KEY(project_id) REFERENCES cloud_projects (id) ON DELETE CASCADE
);

CREATE TABLE cloud_volumes (
	id VARCHAR(63) NOT NULL, 
	project_id VARCHAR(63) NOT NULL, 
	name VARCHAR(63) NOT NULL, 
	size_gib INTEGER NOT NULL, 
	volume_type VARCHAR(32) NOT NULL, 
	boot BOOLEAN NOT NULL, 
	status VARCHAR(32) NOT NULL, 
	image VARCHAR(64), 
	cluster_id VARCHAR(63), 
	server_id VARCHAR(63), 
	delete_with_cluster BOOLEAN NOT NULL, 
	active_task_id VARCHAR(63), 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	CONSTRAINT pk_cloud_volumes PRIMARY KEY (id), 
	CONSTRAINT fk_cloud_volumes_project_id_cloud_projects FOREIGN KEY(project_id) REFERENCES cloud_projects (id), 
	CONSTRAINT uq_cloud_volumes_project_id_name UNIQUE (project_id, name)
);

CREATE TABLE cluster_agents (
	cluster_id VARCHAR(63) NOT NULL, 
	position INTEGER NOT NULL, 
	agent_id VARCHAR(63) NOT NULL, 
	CONSTRAINT pk_cluster_agents PRIMARY KEY (cluster_id, position), 
	CONSTRAINT fk_cluster_agents_agent_id_agents FOREIGN KEY(agent_id) REFERENCES agents (id), 
	CONSTRAINT fk_cluster_agents_cluster_id_clusters FOREIGN KEY(cluster_id) REFERENCES clusters (id) ON DELETE CASCADE, 
	CONSTRAINT uq_cluster_agents_agent_id UNIQUE (agent_id)
);

CREATE TABLE clusters (
	id VARCHAR(63) NOT NULL, 
	num_domains INTEGER NOT NULL, 
	ild_topology VARCHAR(32) NOT NULL, 
	gw_topology VARCHAR(32) NOT NULL, 
	machine_type VARCHAR(32) NOT NULL, 
	CONSTRAINT pk_clusters PRIMARY KEY (id)
);

CREATE TABLE events (
	id INTEGER NOT NULL, 
	time DATETIME NOT NULL, 
	actor VARCHAR(255) NOT NULL, 
	action VARCHAR(64) NOT NULL, 
	target VARCHAR(255) NOT NULL, 
	outcome VARCHAR(64) NOT NULL, 
	source VARCHAR(255) NOT NULL, 
	detail TEXT NOT NULL, 
	CONSTRAINT pk_events PRIMARY KEY (id)
);

CREATE TABLE inventory_version (
	id INTEGER NOT NULL, 
	version BIGINT NOT NULL, 
	CONSTRAINT pk_inventory_version PRIMARY KEY (id), 
	CONSTRAINT ck_inventory_version_ck_inventory_version_one_row CHECK (id = 1)
);

INSERT INTO "inventory_version" VALUES(1,1);

CREATE TABLE leases (
	name VARCHAR(64) NOT NULL, 
	holder VARCHAR(255) NOT NULL, 
	expires_at DATETIME NOT NULL, 
	term BIGINT NOT NULL, 
	CONSTRAINT pk_leases PRIMARY KEY (name)
);

CREATE TABLE partition_ipus (
	cluster_id VARCHAR(63) NOT NULL, 
	slot INTEGER NOT NULL, 
	partition_id VARCHAR(63) NOT NULL, 
	allocation_id VARCHAR(63) NOT NULL, 
	machine INTEGER NOT NULL, 
	routing_id INTEGER NOT NULL, 
	segment INTEGER NOT NULL, 
	gcd INTEGER NOT NULL, 
	CONSTRAINT pk_partition_ipus PRIMARY KEY (cluster_id, slot), 
	CONSTRAINT ck_partition_ipus_slot_on_machine CHECK (slot >= machine * 4 AND slot < (machine + 1) * 4 AND machine >= 0), 
	CONSTRAINT fk_partition_ipus_allocation_machine FOREIGN KEY(allocation_id, cluster_id, machine) REFERENCES allocation_machines (allocation_id, cluster_id, machine), 
	CONSTRAINT fk_partition_ipus_partition FOREIGN KEY(partition_id, allocation_id, cluster_id) REFERENCES partitions (id, allocation_id, cluster_id) ON DELETE CASCADE, 
	CONSTRAINT uq_partition_ipus_partition_id_routing_id UNIQUE (partition_id, routing_id)
);

CREATE TABLE partition_keys (
	id VARCHAR(63) NOT NULL, 
	owner_id VARCHAR(63) NOT NULL, 
	partition_id VARCHAR(63) NOT NULL, 
	key_hash VARCHAR(255) NOT NULL, 
	created_at DATETIME NOT NULL, 
	CONSTRAINT pk_partition_keys PRIMARY KEY (id), 
	CONSTRAINT fk_partition_keys_owner_id_users FOREIGN KEY(owner_id) REFERENCES users (id) ON DELETE CASCADE, 
	CONSTRAINT fk_partition_keys_partition_id_partitions FOREIGN KEY(partition_id) REFERENCES partitions (id) ON DELETE CASCADE
);

CREATE TABLE partitions (
	id VARCHAR(63) NOT NULL, 
	cluster_id VARCHAR(63) NOT NULL, 
	allocation_id VARCHAR(63) NOT NULL, 
	size INTEGER NOT NULL, 
	num_segments INTEGER NOT NULL, 
	num_gcds INTEGER NOT NULL, 
	num_replicas INTEGER NOT NULL, 
	reconfigurable BOOLEAN NOT NULL, 
	routing VARCHAR(32) NOT NULL, 
	gw_routing VARCHAR(32), 
	sync_type VARCHAR(32) NOT NULL, 
	requested_ipus JSON, 
	ready_state VARCHAR(32) NOT NULL, 
	operation_state VARCHAR(32) NOT NULL, 
	errors JSON NOT NULL, 
	disable_auto_reset BOOLEAN NOT NULL, 
	relocatable BOOLEAN NOT NULL, 
	max_auto_reset_retries INTEGER NOT NULL, 
	auto_reset_retry_count INTEGER NOT NULL, 
	last_auto_reset_time DATETIME, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	version INTEGER NOT NULL, operation_owner VARCHAR(255), 
	CONSTRAINT pk_partitions PRIMARY KEY (id), 
	CONSTRAINT fk_partitions_allocation FOREIGN KEY(allocation_id, cluster_id) REFERENCES allocations (id, cluster_id), 
	CONSTRAINT uq_partitions_id_allocation_id_cluster_id UNIQUE (id, allocation_id, cluster_id)
);

CREATE TABLE user_allocations (
	user_id VARCHAR(63) NOT NULL, 
	allocation_id VARCHAR(63) NOT NULL, 
	CONSTRAINT pk_user_allocations PRIMARY KEY (user_id, allocation_id), 
	CONSTRAINT fk_user_allocations_allocation_id_allocations FOREIGN KEY(allocation_id) REFERENCES allocations (id) ON DELETE CASCADE, 
	CONSTRAINT fk_user_allocations_user_id_users FOREIGN KEY(user_id) REFERENCES users (id) ON DELETE CASCADE
);

CREATE TABLE users (
	id VARCHAR(63) NOT NULL, 
	key_hash VARCHAR(255) NOT NULL, 
	admin BOOLEAN NOT NULL, created_at DATETIME, access_version INTEGER DEFAULT '0' NOT NULL, 
	CONSTRAINT pk_users PRIMARY KEY (id)
);

CREATE INDEX ix_events_action ON events (action);

CREATE INDEX ix_events_actor ON events (actor);

CREATE INDEX ix_events_target ON events (target);

CREATE INDEX ix_events_time ON events (time);

CREATE INDEX ix_allocations_cluster_id ON allocations (cluster_id);

CREATE INDEX ix_partitions_allocation_id ON partitions (allocation_id);

CREATE INDEX ix_partitions_cluster_id ON partitions (cluster_id);

CREATE INDEX ix_user_allocations_allocation_id ON user_allocations (allocation_id);

CREATE INDEX ix_partition_ipus_allocation_machine ON partition_ipus (allocation_id, cluster_id, machine);

CREATE INDEX ix_cloud_tokens_project_id ON cloud_tokens (project_id);

CREATE INDEX ix_cloud_clusters_project_id ON cloud_clusters (project_id);

CREATE INDEX ix_cloud_host_slots_server_id ON cloud_host_slots (server_id);

CREATE INDEX ix_cloud_volumes_cluster_id ON cloud_volumes (cluster_id);

CREATE INDEX ix_cloud_volumes_project_id ON cloud_volumes (project_id);

CREATE INDEX ix_cloud_tasks_project_id ON cloud_tasks (project_id);

CREATE INDEX ix_cloud_tasks_resource_id ON cloud_tasks (resource_id);

CREATE INDEX ix_cloud_tasks_state ON cloud_tasks (state);

CREATE INDEX ix_cloud_metering_project_id_time ON cloud_metering (project_id, time);

CREATE INDEX ix_agent_bindings_token_id ON agent_bindings (token_id);

CREATE INDEX ix_cloud_reservations_project_id ON cloud_reservations (project_id);

CREATE INDEX ix_cloud_reserved_units_reservation_id ON cloud_reserved_units (reservation_id);

CREATE INDEX ix_cloud_dataset_storages_project_id ON cloud_dataset_storages (project_id);

CREATE INDEX ix_cloud_dataset_attachments_storage_id ON cloud_dataset_attachments (storage_id);

CREATE INDEX ix_partition_keys_owner_id ON partition_keys (owner_id);

CREATE INDEX ix_partition_keys_partition_id ON partition_keys (partition_id);

CREATE INDEX ix_cloud_keypairs_project_id ON cloud_keypairs (project_id);

CREATE INDEX ix_cloud_cluster_keypairs_keypair_id ON cloud_cluster_keypairs (keypair_id);

CREATE TRIGGER inventory_changed_agents_insert AFTER INSERT ON agents BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_agents_delete AFTER DELETE ON agents BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_agents_update AFTER UPDATE OF host, port, machine_type, serial ON agents BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_agent_keys_insert AFTER INSERT ON agent_keys BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_agent_keys_delete AFTER DELETE ON agent_keys BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_agent_keys_update AFTER UPDATE ON agent_keys BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_clusters_insert AFTER INSERT ON clusters BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_clusters_delete AFTER DELETE ON clusters BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_clusters_update AFTER UPDATE ON clusters BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_cluster_agents_insert AFTER INSERT ON cluster_agents BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_cluster_agents_delete AFTER DELETE ON cluster_agents BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_cluster_agents_update AFTER UPDATE ON cluster_agents BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_allocations_insert AFTER INSERT ON allocations BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_allocations_delete AFTER DELETE ON allocations BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_allocations_update AFTER UPDATE ON allocations BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_allocation_machines_insert AFTER INSERT ON allocation_machines BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_allocation_machines_delete AFTER DELETE ON allocation_machines BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;

CREATE TRIGGER inventory_changed_allocation_machines_update AFTER UPDATE ON allocation_machines BEGIN INSERT INTO inventory_version (id, version) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1; END;
