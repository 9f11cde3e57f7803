# expect: line=1 message="syntax error"
this is not hcl at all ;;;
