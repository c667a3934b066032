-- Every HiveQL statement found in the project's seed documents, extracted by hand, in seed order.
-- The parse test reads this file as one script: every statement must parse.
-- Edits, each marked below: the seed-000 blog shows only the first line of each code block, the
-- rest is restored from the published article; HTML that ate `<…>` or left a `<span>` is repaired;
-- pseudo-code with "..." is left out (it is not SQL).

-- ============================================================ seed 000 (Hive ACID file layout)
CREATE TABLE employee (id int, name string, salary int)
STORED AS ORC TBLPROPERTIES ('transactional' = 'true');

INSERT INTO employee VALUES
(1, 'Jerry', 5000),
(2, 'Tom',   8000),
(3, 'Kate',  6000);

SELECT row__id, id, name, salary FROM employee;

UPDATE employee SET salary = 7000 WHERE id = 2;

CREATE TABLE employee_update (id int, name string, salary int);

INSERT INTO employee_update VALUES
(2, 'Tom',  7000),
(4, 'Mary', 9000);

MERGE INTO employee AS a
USING employee_update AS b ON a.id = b.id
WHEN MATCHED THEN UPDATE SET salary = b.salary
WHEN NOT MATCHED THEN INSERT VALUES (b.id, b.name, b.salary);

ALTER TABLE employee COMPACT 'minor';

ALTER TABLE employee COMPACT 'major';

-- ============================================================ seed 001 (Hive 0.13 ACID, named commands)
SHOW TRANSACTIONS;

SHOW COMPACTIONS;

SHOW LOCKS;

ALTER TABLE employee PARTITION (ds='2014-04-23') COMPACT 'major';

CREATE TABLE no_auto (id int) STORED AS ORC
TBLPROPERTIES ('transactional'='true', 'NO_AUTO_COMPACTION'='true');

-- ============================================================ seed 002 (Hive 事务设计)
CREATE TABLE emp (id int, name string, salary int)
STORED AS ORC TBLPROPERTIES ('transactional' = 'true');

INSERT INTO emp VALUES
(1, 'xiaoming', 3600),
(2, 'zhangsan',   5700),
(3, 'lisi',  9200);

UPDATE people SET salary = 6000 WHERE id = 2;

ALTER TABLE emp COMPACT 'minor';

-- ============================================================ seed 003 (Anatomy of a Merge statement)
create table tmp.tstmerge
(b int, v string)
partitioned by (id int)
clustered by (b) into 1 buckets
stored as orc
TBLPROPERTIES ("transactional"="true");

create table tmp.srcmerge
stored as orc
as
select 1 as id, 'foo' as v;

merge into tmp.tstmerge dst
using tmp.srcmerge src
on src.id=dst.id
when matched and src.id = 0 then delete
when matched then update set
     v=concat(dst.v, src.v)
when not matched then insert values (
    src.b, src.v, src.id
);

select row__id from tmp.tstmerge;

set hive.merge.cardinality.check=false;

-- ------------------------------------------------------------ The cost of ACID with ORC table
create table something (id bigint) stored as orc tblproperties("transactional"="true");

-- ------------------------------------------------------------ Find a timezone offset in pure SQL in hive
set hivevar:D='2018-06-01 01:02:02';

set hivevar:DISPLAY_TZ='Europe/Amsterdam';

set hivevar:DISPLAY_TZ='America/New_York';

set hivevar:DISPLAY_TZ='UTC';

set hivevar:DISPLAY_TZ='Australia/Adelaide';

set hivevar:dateintz=DATE_FORMAT(FROM_UTC_TIMESTAMP(${D}, ${DISPLAY_TZ}),"yyyy-MM-dd HH:mm:ss");

set hivevar:delta=cast(${dateintz} as timestamp) - cast(${D} as timestamp);

select
  concat(
    -- date in TZ
    ${dateintz}

    -- sign
    , if(${delta} < interval '0' minute, '-', '+')

    -- hour
    , lpad(abs(hour(${delta})), 2, 0)

    , ':'

    -- minute
    ,lpad(minute(${delta}), 2, 0)
) as dtwithoffset
;

-- ------------------------------------------------------------ Hive, map, NULL and NPE
-- (the blog's HTML ate the type parameters of `map<…>`)
create table npe (m map<bigint,bigint>);

select count(*) from npe where m is null;

select count(*) from npe where m is not null;

select count(*) from npe where not m is not null;

select count(*) from npe where int(m is not null)=0;

with a as (select null) insert into npe select * from a;

with a as (select map(cast(null as bigint), cast(null as bigint))) insert into npe select * from a;

select m, size(m), isnull(m) from npe;

-- ------------------------------------------------------------ Hive self merge
merge into click as dst using (
    select
      -- For all unique clicks...
        client_name
      , contact_id
      , ts_utc
      -- ... find the duplicates (cnt>1 in having) ...
      , count(*) cnt
      -- ... remember the first one loaded ...
      , min(load_ts) as first_load
      from
        click
      group by
        1, 2, 3
      having cnt > 1
)
as src
-- ... once the first occurrence of the duplicates
-- is found find all the duplicates ...
on
        dst.client_name=src.client_name
    and dst.contact_id=src.contact_id
    and dst.ts_utc=src.ts_utc
-- ... and if it is not the first one loaded ...
when matched and src.first_load != dst.load_ts
-- .. delete it.
then delete
;

create temporary table clickdups stored as orc as select
        client_name
      , contact_id
      , ts_utc
      , count(*) cnt
      , min(load_ts) as first_load
      from
        click
      group by
        1, 2, 3
      having cnt > 1
;

merge into click as dst using clickdups
as src
on
        dst.client_name=src.client_name
    and dst.contact_id=src.contact_id
    and dst.ts_utc=src.ts_utc
when matched and src.first_load != dst.load_ts
then delete
;

-- ------------------------------------------------------------ Create a time dimension table in pure hive SQL
set hivevar:start_day=2010-01-01;
set hivevar:end_day=2050-12-31;
set hivevar:timeDimTable=default.timeDim;

create table if not exists ${timeDimTable} as
with dates as (
select date_add("${start_day}", a.pos) as d
from (select posexplode(split(repeat("o", datediff("${end_day}", "${start_day}")), "o"))) a
)
select
    d as d
  , year(d) as year
  , month(d) as month
  , day(d) as day
  , date_format(d, 'u') as daynumber_of_week
  , date_format(d, 'EEEE') as dayname_of_week
  , date_format(d, 'D') as daynumber_of_year

from dates
sort by d
;

set hivevar:start_day=2010-01-01;
set hivevar:end_day=2010-01-10;
select date_add("${start_day}", a.pos) as d
from (select posexplode(split(repeat("o", datediff("${end_day}", "${start_day}")), "o"))) a;

select datediff("${end_day}", "${start_day}");

select repeat("o", 9);

select split("ooooooooo", "o");

select posexplode(split("ooooooooo", "o"));

with dates as (
select date_add("${start_day}", a.pos) as d
from (select posexplode(split(repeat("o", datediff("${end_day}", "${start_day}")), "o"))) a)
select * from dates;

set hivevar:start_day=2010-01-01;
set hivevar:end_day=2010-01-02;
set hivevar:timeDimTable=default.timeDim;

-- (the blog left a `<span id="mce_SELREST_start" …></span>` after `as`; removed)
create table if not exists ${timeDimTable} as
with dates as (
  select date_add("${start_day}", a.pos) as d
  from (select posexplode(split(repeat("o", datediff("${end_day}", "${start_day}")), "o"))) a
),
hours as (
  select a.pos as h
  from (select posexplode(split(repeat("o", 23), "o"))) a
)
select
    from_unixtime(unix_timestamp(cast(d as timestamp)) + (h * 3600)) as dt
  , d as d
  , year(d) as year
  , month(d) as month
  , day(d) as day
  , h as hour
  , date_format(d, 'u') as daynumber_of_week
  , date_format(d, 'EEEE') as dayname_of_week
  , date_format(d, 'D') as daynumber_of_year

from dates
join hours
sort by dt
;

-- ------------------------------------------------------------ Alter location of a Hive table
create table if not exists tstloc (id bigint)
clustered by (id) into 4 buckets
stored as orc
location 'hdfs:///tmp/ttslocorig'
tblproperties ("transactional"="true");
insert into tstloc values(1);
select * from tstloc;

alter table tstloc set location 'hdfs:///tmp/ttslocnew';

select * from tstloc;

-- Left out (pseudo-code in seed 003, not SQL):
--   create table summary (id bigint, number_sent bigint, number_open bigint...)stored as orc tblproperties("transactional"="true");
--   insert into summary select .... from sent;
--   merge into summary select ... from open;
-- And Hive's own internal rewrite of MERGE (FROM … INSERT INTO … multi-insert with
-- cardinality_violation), which seed 003 prints from hiveserver2.log: not a user statement.
-- seed 004 (Streaming Mutation API) has no SQL.
