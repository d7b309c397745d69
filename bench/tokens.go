package main

import "errors"

func benchTokenizer(env Env) (Row, error) { return Row{}, errors.New("not written yet") }
