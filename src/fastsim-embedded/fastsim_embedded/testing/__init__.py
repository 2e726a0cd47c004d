"""Tools for exercising the host: a minimal consumer plugin and the contract-suite driver.

    | module          | what it owns                                                        |
    |-----------------|---------------------------------------------------------------------|
    | probe           | a minimal consumer plugin (subscribe, capture, finalize, commit)    |
    | contract_driver | this host as a contract-suite ``CoreDriver``                         |
"""
