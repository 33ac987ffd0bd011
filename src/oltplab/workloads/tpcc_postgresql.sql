-- The nine tables of the TPC-C-like kind (clause 1.3 of the TPC-C specification, revision
-- 5.11) and the two indexes its transactions look rows up by, in PostgreSQL's dialect.
-- tpcc_mysql.sql is the same schema for the MySQL family: the two differ only in the four
-- date columns' type, TIMESTAMP here, as PostgreSQL has no DATETIME.
--
-- tpcc_load.lua runs this file's statements in order: it drops each `--` comment to the
-- line's end and splits at semicolons, so neither may appear inside a statement. Editing
-- the file changes the cells' definitions (tpcc.py digests it with the script).

CREATE TABLE warehouse (
  w_id INT NOT NULL,
  w_name VARCHAR(10),
  w_street_1 VARCHAR(20),
  w_street_2 VARCHAR(20),
  w_city VARCHAR(20),
  w_state CHAR(2),
  w_zip CHAR(9),
  w_tax DECIMAL(4,4),
  w_ytd DECIMAL(12,2),
  PRIMARY KEY (w_id)
);

CREATE TABLE district (
  d_id SMALLINT NOT NULL,
  d_w_id INT NOT NULL,
  d_name VARCHAR(10),
  d_street_1 VARCHAR(20),
  d_street_2 VARCHAR(20),
  d_city VARCHAR(20),
  d_state CHAR(2),
  d_zip CHAR(9),
  d_tax DECIMAL(4,4),
  d_ytd DECIMAL(12,2),
  d_next_o_id INT,
  PRIMARY KEY (d_w_id, d_id)
);

CREATE TABLE customer (
  c_id INT NOT NULL,
  c_d_id SMALLINT NOT NULL,
  c_w_id INT NOT NULL,
  c_first VARCHAR(16),
  c_middle CHAR(2),
  c_last VARCHAR(16),
  c_street_1 VARCHAR(20),
  c_street_2 VARCHAR(20),
  c_city VARCHAR(20),
  c_state CHAR(2),
  c_zip CHAR(9),
  c_phone CHAR(16),
  c_since TIMESTAMP,
  c_credit CHAR(2),
  c_credit_lim DECIMAL(12,2),
  c_discount DECIMAL(4,4),
  c_balance DECIMAL(12,2),
  c_ytd_payment DECIMAL(12,2),
  c_payment_cnt SMALLINT,
  c_delivery_cnt SMALLINT,
  c_data VARCHAR(500),
  PRIMARY KEY (c_w_id, c_d_id, c_id)
);

CREATE TABLE history (
  h_c_id INT,
  h_c_d_id SMALLINT,
  h_c_w_id INT,
  h_d_id SMALLINT,
  h_w_id INT,
  h_date TIMESTAMP,
  h_amount DECIMAL(6,2),
  h_data VARCHAR(24)
);

CREATE TABLE orders (
  o_id INT NOT NULL,
  o_d_id SMALLINT NOT NULL,
  o_w_id INT NOT NULL,
  o_c_id INT,
  o_entry_d TIMESTAMP,
  o_carrier_id SMALLINT,
  o_ol_cnt SMALLINT,
  o_all_local SMALLINT,
  PRIMARY KEY (o_w_id, o_d_id, o_id)
);

CREATE TABLE new_orders (
  no_o_id INT NOT NULL,
  no_d_id SMALLINT NOT NULL,
  no_w_id INT NOT NULL,
  PRIMARY KEY (no_w_id, no_d_id, no_o_id)
);

CREATE TABLE order_line (
  ol_o_id INT NOT NULL,
  ol_d_id SMALLINT NOT NULL,
  ol_w_id INT NOT NULL,
  ol_number SMALLINT NOT NULL,
  ol_i_id INT,
  ol_supply_w_id INT,
  ol_delivery_d TIMESTAMP,
  ol_quantity SMALLINT,
  ol_amount DECIMAL(6,2),
  ol_dist_info CHAR(24),
  PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)
);

CREATE TABLE item (
  i_id INT NOT NULL,
  i_im_id INT,
  i_name VARCHAR(24),
  i_price DECIMAL(5,2),
  i_data VARCHAR(50),
  PRIMARY KEY (i_id)
);

CREATE TABLE stock (
  s_i_id INT NOT NULL,
  s_w_id INT NOT NULL,
  s_quantity SMALLINT,
  s_dist_01 CHAR(24),
  s_dist_02 CHAR(24),
  s_dist_03 CHAR(24),
  s_dist_04 CHAR(24),
  s_dist_05 CHAR(24),
  s_dist_06 CHAR(24),
  s_dist_07 CHAR(24),
  s_dist_08 CHAR(24),
  s_dist_09 CHAR(24),
  s_dist_10 CHAR(24),
  s_ytd INT,
  s_order_cnt SMALLINT,
  s_remote_cnt SMALLINT,
  s_data VARCHAR(50),
  PRIMARY KEY (s_w_id, s_i_id)
);

-- Payment and Order-Status find a customer by last name, in first-name order (clauses
-- 2.5.2.2 and 2.6.2.2), and Order-Status the customer's latest order (clause 2.6.2.2).
CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first);

CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);
