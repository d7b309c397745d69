package main

import "errors"

func benchReplay(env Env) (Row, error) { return Row{}, errors.New("not written yet") }
