create table carts (id integer primary key);
