# expect: exit=2 line=0 message="no velyrix_cluster resource"

