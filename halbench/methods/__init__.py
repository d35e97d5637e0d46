"""Attribution methods that halbench runs against its planted causes."""
